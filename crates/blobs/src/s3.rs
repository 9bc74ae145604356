//! Evidence bytes in S3 or any S3-compatible store (path-style addressing and a
//! custom endpoint for the latter).

use std::time::Duration;

use aws_sdk_s3::Client;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{
    BehaviorVersion, Credentials, Region, RequestChecksumCalculation, ResponseChecksumValidation,
    SharedCredentialsProvider,
};
use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
use aws_sdk_s3::operation::create_bucket::CreateBucketError;
use aws_sdk_s3::operation::get_object::GetObjectError;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;

use crate::{Blobs, Error, check_key};

/// Where and how to reach the bucket.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Settings {
    /// The bucket.
    pub bucket: String,
    /// Prepended to every key (`evidence/` → `evidence/<org>/<id>`); may be empty.
    pub prefix: String,
    /// The region (S3-compatible stores usually accept any).
    pub region: String,
    /// An S3-compatible endpoint (`http://127.0.0.1:9100`); AWS's own when `None`.
    pub endpoint: Option<String>,
    /// Path-style addressing (`endpoint/bucket/key`), which most S3-compatible stores
    /// need.
    pub path_style: bool,
    /// Static keys; `None` takes credentials from AWS's default chain (environment,
    /// web identity token as on EKS, ECS task role, instance profile).
    pub keys: Option<S3Keys>,
    /// Send checksums only where S3 requires them, for stores that refuse the SDK's
    /// default checksum headers.
    pub checksums_when_required: bool,
    /// The longest one call may take, retries included.
    pub timeout: Duration,
}

impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Settings")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("region", &self.region)
            .field("endpoint", &self.endpoint)
            .field("path_style", &self.path_style)
            .field("keys", &self.keys)
            .field("checksums_when_required", &self.checksums_when_required)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// An access key pair.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Keys {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
}

impl std::fmt::Debug for S3Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Keys")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<secret>")
            .finish()
    }
}

/// Bytes as objects of one bucket.
#[derive(Debug, Clone)]
pub struct S3Blobs {
    client: Client,
    bucket: String,
    prefix: String,
}

impl S3Blobs {
    /// A store over `settings`. With static keys it reads no environment or profile
    /// files; without, the default chain finds credentials (and refreshes them) when
    /// they are first needed. Connects lazily.
    pub async fn new(settings: &S3Settings) -> Self {
        let credentials = match &settings.keys {
            Some(keys) => SharedCredentialsProvider::new(Credentials::new(
                keys.access_key_id.clone(),
                keys.secret_access_key.clone(),
                None,
                None,
                "agentprocess",
            )),
            None => SharedCredentialsProvider::new(
                aws_config::default_provider::credentials::DefaultCredentialsChain::builder()
                    .region(Region::new(settings.region.clone()))
                    .build()
                    .await,
            ),
        };
        let attempt = settings.timeout.mul_f32(0.6).max(Duration::from_millis(200));
        let mut config = aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .credentials_provider(credentials)
            .region(Region::new(settings.region.clone()))
            .force_path_style(settings.path_style)
            // Without an operation timeout a store that accepts and never answers
            // holds a call forever.
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(attempt.min(Duration::from_secs(2)))
                    .operation_attempt_timeout(attempt)
                    .operation_timeout(settings.timeout)
                    .build(),
            )
            .retry_config(RetryConfig::standard().with_max_attempts(2))
            // The server checks every object it reads against the SHA-256 recorded at
            // upload; a store-side checksum failure must read as the bytes that came
            // back (a hash mismatch), not as an unreachable store.
            .response_checksum_validation(ResponseChecksumValidation::WhenRequired);
        if let Some(endpoint) = &settings.endpoint {
            config = config.endpoint_url(endpoint);
        }
        if settings.checksums_when_required {
            config = config.request_checksum_calculation(RequestChecksumCalculation::WhenRequired);
        }
        Self {
            client: Client::from_conf(config.build()),
            bucket: settings.bucket.clone(),
            prefix: settings.prefix.clone(),
        }
    }

    /// Creates the bucket unless it exists (for development and tests; production
    /// buckets are made by their owners).
    pub async fn create_bucket(&self) -> Result<(), Error> {
        match self.client.create_bucket().bucket(&self.bucket).send().await {
            Ok(_) => Ok(()),
            Err(SdkError::ServiceError(error))
                if matches!(
                    error.err(),
                    CreateBucketError::BucketAlreadyExists(_) | CreateBucketError::BucketAlreadyOwnedByYou(_)
                ) =>
            {
                Ok(())
            }
            Err(error) => Err(storage(&error)),
        }
    }

    fn object(&self, key: &str) -> Result<String, Error> {
        check_key(key)?;
        Ok(format!("{}{key}", self.prefix))
    }
}

fn storage<E: std::error::Error + 'static, R: std::fmt::Debug>(error: &SdkError<E, R>) -> Error {
    Error::Storage(DisplayErrorContext(error).to_string())
}

impl Blobs for S3Blobs {
    async fn put(&self, key: &str, bytes: &[u8], content_type: &str) -> Result<(), Error> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(self.object(key)?)
            .content_type(content_type)
            .body(ByteStream::from(bytes.to_vec()))
            .send()
            .await
            .map_err(|error| storage(&error))?;
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, Error> {
        let found = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(self.object(key)?)
            .send()
            .await;
        match found {
            Ok(object) => {
                let body = object
                    .body
                    .collect()
                    .await
                    .map_err(|error| Error::Storage(error.to_string()))?;
                Ok(Some(body.into_bytes().to_vec()))
            }
            Err(SdkError::ServiceError(error)) if matches!(error.err(), GetObjectError::NoSuchKey(_)) => Ok(None),
            Err(error) => Err(storage(&error)),
        }
    }

    async fn delete(&self, key: &str) -> Result<(), Error> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(self.object(key)?)
            .send()
            .await
            .map_err(|error| storage(&error))?;
        Ok(())
    }

    async fn download_url(
        &self,
        key: &str,
        file_name: &str,
        content_type: &str,
        expires_in: Duration,
    ) -> Result<Option<String>, Error> {
        let presigning = PresigningConfig::expires_in(expires_in).map_err(|error| Error::Storage(error.to_string()))?;
        let request = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(self.object(key)?)
            .response_content_type(content_type)
            .response_content_disposition(crate::attachment(file_name))
            .presigned(presigning)
            .await
            .map_err(|error| storage(&error))?;
        Ok(Some(request.uri().to_owned()))
    }
}
